---
# A tail-fill model: starts at limits.min (set by bench/mixed.py through an override) and fills toward the head.
type: incremental
table: tail_fill
interval:
  max: 300
  min: 300
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
fill:
  direction: tail
limits:
  min: 1700001000
dependencies:
  - "{{external}}.beacon_blocks"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT slot, slot_start_date_time, block_root, min(propagation_slot_start_diff) AS first_seen_ms
FROM {{ dep["{{external}}"].beacon_blocks.from }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY slot, slot_start_date_time, block_root
