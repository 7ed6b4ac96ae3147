from graph.build.worker.cognee_worker import main

main()
