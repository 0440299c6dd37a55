---
# Joins classified blocks with the proposer's entity. Depends on a scheduled model (validator_entities): once it
# has run, it never limits which positions are ready; before its first run nothing here is. Write strategy `sql`:
# the body owns idempotency with REPLACE WHERE.
type: incremental
table: block_propagation_five_minute
interval:
  max: 300
  min: 120
  type: timestamp
schedules:
  forwardfill: "@every 30s"
  backfill: "@every 5m"
dependencies:
  - {{transformation}}.block_propagation_two_minute
  - {{transformation}}.validator_entities
tags: [propagation, entity]
---
-- Replace exactly this interval's rows in one Delta commit; re-running gives the same table.
INSERT INTO {{ self.from }}
REPLACE WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
SELECT
  p.slot,
  p.slot_start_date_time,
  p.block_root,
  p.proposer_index,
  coalesce(e.entity, 'unknown') AS entity,
  p.avg_propagation_ms,
  p.propagation_class,
  p.propagation_class = 'slow' AS is_late
FROM {{ ref("{{transformation}}.block_propagation_two_minute") }} AS p
LEFT JOIN {{ ref("{{transformation}}.validator_entities") }} AS e
  ON e.validator_index = p.proposer_index
WHERE p.slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND p.slot_start_date_time < timestamp_seconds({{ bounds.end }})
