"""The cognee worker child: started as `python -m graph.build.worker` by
`graph.build.worker_client`, never imported by the owning process."""
