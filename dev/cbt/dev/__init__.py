"""Local development tooling: ``cbt dev up|down|status`` (Kafka, Redis and Spark Connect on 127.0.0.1) and the demo.

Its own distribution (``cbt-dev``): only this part needs the Spark and Kafka jars; the services reach Spark through
Spark Connect.
"""
