"""The only code of the library that talks to Kafka, Redis, Spark and Delta (the pure core imports none of them)."""
