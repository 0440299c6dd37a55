---
# Beacon blocks as seen by several monitoring clients: one row per (block, client).
# Positions are unix seconds of slot_start_date_time; bounds are half-open, so max is one past the newest second.
table: beacon_blocks            # database falls back to models.external.default_database (ethereum)
interval:
  type: timestamp
cache:
  incremental_scan_interval: 5s # look only outside the known bounds this often
  full_scan_interval: 1m        # rescan the whole table this often
lag: 12                         # ignore the newest slot: late client observations may still arrive
---
SELECT
  unix_seconds(min(slot_start_date_time)) AS min,
  unix_seconds(max(slot_start_date_time)) + 1 AS max
FROM {{ self.from }}
{% if cache.is_incremental_scan %}
WHERE slot_start_date_time < timestamp_seconds({{ cache.previous_min }})
   OR slot_start_date_time >= timestamp_seconds({{ cache.previous_max }})
{% endif %}
