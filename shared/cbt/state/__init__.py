"""State the services share: ``ports`` (the protocols adapters implement), ``live`` (a planning snapshot read
through those ports), ``planner`` (plan, claim in the ledger, publish: the enqueue step of the coordinator and the
invalidator) and ``admin_records`` (rows of the durable admin tables as values)."""
