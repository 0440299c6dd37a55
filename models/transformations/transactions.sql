---
# Normalised transactions from whichever provider has data: the OR group needs at least one of its members
# and contributes the union of their ranges. Rows are immutable, so `append` with a unique key is enough:
# a re-run never inserts a transaction twice.
type: incremental
table: transactions
interval:
  max: 60
  min: 0          # forward fill may run any partial interval
  type: timestamp
schedules:
  forwardfill: "@every 10s"
  backfill: "@every 1m"
dependencies:
  - [{{external}}.raw_transactions, {{external}}.raw_transactions_alt]
tags: [transactions]
write:
  strategy: append
  unique_key: [tx_hash]
batch:
  mode: bounds    # each row depends only on its own transaction: one run over a backlog's range writes the same rows
---
SELECT block_number, block_timestamp, tx_hash, tx_index, from_address, to_address, value_wei, gas_used
FROM (
  SELECT
    *,
    row_number() OVER (PARTITION BY tx_hash ORDER BY provider) AS rn
  FROM (
    SELECT 1 AS provider, block_number, block_timestamp, tx_hash, tx_index, from_address, to_address,
           value_wei, gas_used
    FROM {{ ref("{{external}}.raw_transactions") }}
    WHERE block_timestamp >= timestamp_seconds({{ bounds.start }})
      AND block_timestamp < timestamp_seconds({{ bounds.end }})
    UNION ALL
    SELECT 2 AS provider, block_number, block_timestamp, tx_hash, tx_index, from_address, to_address,
           value_wei, gas_used
    FROM {{ ref("{{external}}.raw_transactions_alt") }}
    WHERE block_timestamp >= timestamp_seconds({{ bounds.start }})
      AND block_timestamp < timestamp_seconds({{ bounds.end }})
  ) AS both_providers
) AS ranked
WHERE rn = 1
