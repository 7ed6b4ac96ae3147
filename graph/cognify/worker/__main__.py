from graph.cognify.worker.cognee_worker import main

main()
