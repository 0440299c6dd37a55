---
# Transactions without duplicates: append with a unique key, one-minute intervals.
type: incremental
table: tx_dedup
interval:
  max: 60
  min: 60
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 5s"
dependencies:
  - "{{external}}.raw_transactions"
write:
  strategy: append
  unique_key: [tx_hash]
---
SELECT block_number, block_timestamp, tx_hash, tx_index, value_wei, gas_used
FROM {{ dep["{{external}}"].raw_transactions.from }}
WHERE block_timestamp >= timestamp_seconds({{ bounds.start }})
  AND block_timestamp < timestamp_seconds({{ bounds.end }})
