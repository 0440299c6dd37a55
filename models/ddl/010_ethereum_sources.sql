-- Source tables (external models): written by the data generator, never by cbt.

-- One row per (block, monitoring client): when that client saw the block, relative to the slot start.
CREATE TABLE IF NOT EXISTS {{external}}.beacon_blocks (
  slot BIGINT,
  slot_start_date_time TIMESTAMP,
  block_root STRING,
  proposer_index BIGINT,
  meta_client_name STRING,
  propagation_slot_start_diff BIGINT COMMENT 'milliseconds after the slot start'
) USING DELTA;

-- Entity changes per validator; the latest row wins.
CREATE TABLE IF NOT EXISTS {{external}}.validator_entity (
  validator_index BIGINT,
  entity STRING,
  updated_date_time TIMESTAMP
) USING DELTA;

-- Transactions from the primary provider.
CREATE TABLE IF NOT EXISTS {{external}}.raw_transactions (
  block_number BIGINT,
  block_timestamp TIMESTAMP,
  tx_hash STRING,
  tx_index INT,
  from_address STRING,
  to_address STRING,
  value_wei DECIMAL(38, 0),
  gas_used BIGINT
) USING DELTA;

-- The same transactions from a second provider (same schema).
CREATE TABLE IF NOT EXISTS {{external}}.raw_transactions_alt (
  block_number BIGINT,
  block_timestamp TIMESTAMP,
  tx_hash STRING,
  tx_index INT,
  from_address STRING,
  to_address STRING,
  value_wei DECIMAL(38, 0),
  gas_used BIGINT
) USING DELTA;
