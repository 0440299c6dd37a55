---
# Execution-layer transactions from the primary provider. Positions: unix seconds of block_timestamp.
table: raw_transactions
interval:
  type: timestamp
cache:
  incremental_scan_interval: 5s
  full_scan_interval: 1m
lag: 12
---
SELECT
  unix_seconds(min(block_timestamp)) AS min,
  unix_seconds(max(block_timestamp)) + 1 AS max
FROM {{ self.from }}
{% if cache.is_incremental_scan %}
WHERE block_timestamp < timestamp_seconds({{ cache.previous_min }})
   OR block_timestamp >= timestamp_seconds({{ cache.previous_max }})
{% endif %}
