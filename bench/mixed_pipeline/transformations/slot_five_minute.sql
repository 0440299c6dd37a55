---
# Chain level 2: classifies each slot, in five-minute tasks; partial tasks of a minute or more at the head.
type: incremental
table: slot_five_minute
interval:
  max: 300
  min: 60
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
dependencies:
  - "{{transformation}}.slot_minute"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT
  slot, slot_start_date_time, proposer_index, avg_propagation_ms,
  max_propagation_ms - min_propagation_ms AS propagation_spread_ms,
  CASE WHEN avg_propagation_ms < 2000 THEN 'fast' WHEN avg_propagation_ms < 4000 THEN 'normal' ELSE 'slow' END
    AS propagation_class,
  tx_count
FROM {{ ref("{{transformation}}.slot_minute") }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
