---
# Transactions, three per slot; this source stalls during the bench and catches up in one late batch.
table: raw_transactions
interval:
  type: timestamp
cache:
  incremental_scan_interval: 1s   # bounds from the Delta log: about 10 ms a scan
  full_scan_interval: 30s
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
