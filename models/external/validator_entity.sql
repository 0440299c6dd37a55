---
# Which entity (staking pool, exchange…) runs each validator; a new row each time that changes.
# database: falls back to models.external.default_database (ethereum in config.yaml)
table: validator_entity
interval:
  type: timestamp
cache:
  incremental_scan_interval: 30s
  full_scan_interval: 5m
---
SELECT
  unix_seconds(min(updated_date_time)) AS min,
  unix_seconds(max(updated_date_time)) + 1 AS max
FROM {{ self.from }}
