"""Planning against live state: ``live`` (one snapshot reader over the state ports, used by the coordinator, the
api, the worker and the invalidator), ``planner`` (plan, claim in the ledger, publish: the enqueue step of the
coordinator, the invalidator and the api) and ``hot_index`` (rebuilding the hot coverage index from the durable
record). Its modules log as ``cbt.planning``."""
