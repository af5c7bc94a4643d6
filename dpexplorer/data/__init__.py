"""Loading (polars), schema, bounds, queries -> true answers on D and D'. Never imports gui."""
