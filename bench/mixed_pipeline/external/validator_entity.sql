---
# Which entity runs each validator (reference data for the scheduled model).
table: validator_entity
interval:
  type: timestamp
cache:
  incremental_scan_interval: 10s
  full_scan_interval: 1m
---
SELECT
  unix_seconds(min(updated_date_time)) AS min,
  unix_seconds(max(updated_date_time)) + 1 AS max
FROM {{ self.from }}
