---
# Chain level 1: one row per slot from both sources (an AND of two externals), in one-minute tasks.
type: incremental
table: slot_minute
interval:
  max: 60
  min: 60
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
dependencies:
  - "{{external}}.beacon_blocks"
  - "{{external}}.raw_transactions"
write:
  strategy: replace
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
---
SELECT
  b.slot, b.slot_start_date_time, b.proposer_index,
  count(DISTINCT b.meta_client_name) AS client_count,
  avg(b.propagation_slot_start_diff) AS avg_propagation_ms,
  min(b.propagation_slot_start_diff) AS min_propagation_ms,
  max(b.propagation_slot_start_diff) AS max_propagation_ms,
  coalesce(max(t.tx_count), 0) AS tx_count,
  coalesce(max(t.gas_used), 0) AS gas_used
FROM {{ dep["{{external}}"].beacon_blocks.from }} AS b
LEFT JOIN (
  SELECT block_number, count(*) AS tx_count, sum(gas_used) AS gas_used
  FROM {{ dep["{{external}}"].raw_transactions.from }}
  WHERE block_timestamp >= timestamp_seconds({{ bounds.start }})
    AND block_timestamp < timestamp_seconds({{ bounds.end }})
  GROUP BY block_number
) AS t ON t.block_number = b.slot
WHERE b.slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND b.slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY b.slot, b.slot_start_date_time, b.proposer_index
