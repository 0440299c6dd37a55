---
# Classifies each block's propagation; reads the minute model in two-minute tasks.
type: incremental
table: block_propagation_two_minute
interval:
  max: 120
  min: 120       # full intervals only
  type: timestamp
schedules:
  forwardfill: "@every 20s"
  backfill: "@every 2m"
fill:
  direction: tail   # a fresh model starts at the oldest available data
  buffer: 0
dependencies:
  - {{transformation}}.block_propagation_minute
tags: [propagation]
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT
  slot,
  slot_start_date_time,
  block_root,
  proposer_index,
  avg_propagation_ms,
  max_propagation_ms - min_propagation_ms AS propagation_spread_ms,
  CASE
    WHEN avg_propagation_ms < 2000 THEN 'fast'
    WHEN avg_propagation_ms < 4000 THEN 'normal'
    ELSE 'slow'
  END AS propagation_class
FROM {{ ref("{{transformation}}.block_propagation_minute") }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
