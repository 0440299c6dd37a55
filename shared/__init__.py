"""CBT on Kafka and Spark: idempotent interval transformations kept correct and fresh.

The package root holds the pure core (models, scheduling rules, messages); ``cbt.adapters`` holds the only code that
talks to Kafka, Redis, Spark and Delta, and ``cbt.services`` the processes that wire them together.
"""

__version__ = "0.1.0"
