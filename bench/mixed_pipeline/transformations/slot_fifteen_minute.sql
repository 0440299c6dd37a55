---
# Chain level 3: full fifteen-minute intervals only; joins the proposer's entity from a scheduled model.
type: incremental
table: slot_fifteen_minute
interval:
  max: 900
  min: 900
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
dependencies:
  - "{{transformation}}.slot_five_minute"
  - "{{transformation}}.entities_now"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT
  p.slot, p.slot_start_date_time, coalesce(e.entity, 'unknown') AS entity, p.propagation_class,
  p.propagation_class = 'slow' AS is_late, p.tx_count
FROM {{ ref("{{transformation}}.slot_five_minute") }} AS p
LEFT JOIN {{ ref("{{transformation}}.entities_now") }} AS e ON e.validator_index = p.proposer_index
WHERE p.slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND p.slot_start_date_time < timestamp_seconds({{ bounds.end }})
