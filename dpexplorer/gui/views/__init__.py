"""Plot views. Each shows a result computed by the compute service and can save itself."""
