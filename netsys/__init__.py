"""Network models (CCMOD's ``netsys``): topologies, routes, quiet costs, background load."""
