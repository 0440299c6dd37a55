---
# Write strategy sql: the body owns idempotency (REPLACE WHERE over exactly the interval).
type: incremental
table: block_stats
interval:
  max: 120
  min: 120
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
dependencies:
  - "{{external}}.beacon_blocks"
---
INSERT INTO {{ self.from }}
REPLACE WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
SELECT slot, slot_start_date_time, count(*) AS clients,
       max_by(meta_client_name, propagation_slot_start_diff) AS slowest_client,
       max(propagation_slot_start_diff) AS max_propagation_ms
FROM {{ dep["{{external}}"].beacon_blocks.from }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY slot, slot_start_date_time
