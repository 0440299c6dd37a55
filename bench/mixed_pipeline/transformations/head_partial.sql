---
# A head model with partial intervals: at the head it runs as soon as 10 seconds are ready, up to two minutes.
type: incremental
table: head_partial
interval:
  max: 120
  min: 10
  type: timestamp
schedules:
  forwardfill: "@every 2s"
  backfill: "@every 5s"
fill:
  direction: head
dependencies:
  - "{{external}}.beacon_blocks"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT slot, slot_start_date_time, count(*) AS clients, avg(propagation_slot_start_diff) AS avg_propagation_ms
FROM {{ dep["{{external}}"].beacon_blocks.from }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY slot, slot_start_date_time
