print("loadtest: not yet implemented")
