"""The original CBT's REST API, served as it answered (``/cbt/api/v1``), over this product's state."""
