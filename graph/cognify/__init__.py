"""Background graph building. This package's own modules run in the owning process
(the operation manager and the handle on the worker child); `graph.cognify.worker`
runs only in the cognee worker child and is the one place that imports cognee."""
