"""The cognee worker child: started as `python -m graph.cognify.worker` by
`graph.cognify.worker_client`, never imported by the owning process."""
