---
# Per-block propagation across monitoring clients, one row per (slot, block_root).
# First link of the chain minute → two_minute → five_minute; positions are unix seconds.
type: incremental
table: block_propagation_minute   # database: models.transformations.default_database (analytics)
interval:
  max: 60        # one-minute tasks
  min: 12        # forward fill may run a partial task of at least one slot
  type: timestamp
schedules:
  forwardfill: "@every 10s"
  backfill: "@every 1m"
dependencies:
  - {{external}}.beacon_blocks
tags: [propagation]
expose:                # served by the api's read API: /api/v1/tables/analytics.block_propagation_minute
  key: [slot, block_root]
  position: slot_start_date_time
write:
  strategy: replace   # the body is a SELECT; the worker replaces this interval's rows in one Delta commit
  replace_where: >-
    slot_start_date_time >= timestamp_seconds({{ bounds.start }})
    AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
checks:               # an interval is published only if these hold (docs/checks.md); else it waits, and so do its
  - not_null: [block_root, proposer_index]             # dependents, until its source is repaired and re-run
  - expression: min_propagation_ms >= 0                # a block seen before its slot started: a broken clock
    name: seen_after_slot_start
---
SELECT
  slot,
  slot_start_date_time,
  block_root,
  proposer_index,
  count(DISTINCT meta_client_name) AS client_count,
  avg(propagation_slot_start_diff) AS avg_propagation_ms,
  min(propagation_slot_start_diff) AS min_propagation_ms,
  max(propagation_slot_start_diff) AS max_propagation_ms
FROM {{ ref("{{external}}.beacon_blocks") }}
WHERE slot_start_date_time >= timestamp_seconds({{ bounds.start }})
  AND slot_start_date_time < timestamp_seconds({{ bounds.end }})
GROUP BY slot, slot_start_date_time, block_root, proposer_index
