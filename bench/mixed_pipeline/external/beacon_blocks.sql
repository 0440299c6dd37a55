---
# One row per (block, monitoring client); the newest slot's last client row arrives a few seconds late, so the
# newest 12 seconds are ignored (lag).
table: beacon_blocks
interval:
  type: timestamp
cache:
  incremental_scan_interval: 1s   # bounds from the Delta log: about 10 ms a scan
  full_scan_interval: 30s
lag: 12
---
SELECT
  unix_seconds(min(slot_start_date_time)) AS min,
  unix_seconds(max(slot_start_date_time)) + 1 AS max
FROM {{ self.from }}
{% if cache.is_incremental_scan %}
WHERE slot_start_date_time < timestamp_seconds({{ cache.previous_min }})
   OR slot_start_date_time >= timestamp_seconds({{ cache.previous_max }})
{% endif %}
