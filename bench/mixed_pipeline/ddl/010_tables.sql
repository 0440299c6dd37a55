-- Source tables (external models, written by bench/mixed.py) and the targets of the mixed pipeline.
CREATE DATABASE IF NOT EXISTS {{external}};
CREATE DATABASE IF NOT EXISTS {{transformation}};

CREATE TABLE IF NOT EXISTS {{external}}.beacon_blocks (
  slot BIGINT, slot_start_date_time TIMESTAMP, block_root STRING, proposer_index BIGINT, meta_client_name STRING,
  propagation_slot_start_diff BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{external}}.raw_transactions (
  block_number BIGINT, block_timestamp TIMESTAMP, tx_hash STRING, tx_index INT, from_address STRING,
  to_address STRING, value_wei DECIMAL(38, 0), gas_used BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{external}}.validator_entity (
  validator_index BIGINT, entity STRING, updated_date_time TIMESTAMP
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.slot_minute (
  slot BIGINT, slot_start_date_time TIMESTAMP, proposer_index BIGINT, client_count BIGINT,
  avg_propagation_ms DOUBLE, min_propagation_ms BIGINT, max_propagation_ms BIGINT, tx_count BIGINT, gas_used BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.slot_five_minute (
  slot BIGINT, slot_start_date_time TIMESTAMP, proposer_index BIGINT, avg_propagation_ms DOUBLE,
  propagation_spread_ms BIGINT, propagation_class STRING, tx_count BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.slot_fifteen_minute (
  slot BIGINT, slot_start_date_time TIMESTAMP, entity STRING, propagation_class STRING, is_late BOOLEAN,
  tx_count BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.entities_now (
  validator_index BIGINT, entity STRING, updated_date_time TIMESTAMP
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.tx_dedup (
  block_number BIGINT, block_timestamp TIMESTAMP, tx_hash STRING, tx_index INT, value_wei DECIMAL(38, 0),
  gas_used BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.block_gas (
  block_number BIGINT, block_timestamp TIMESTAMP, tx_count BIGINT, total_gas_used BIGINT,
  total_value_wei DECIMAL(38, 0)
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.block_stats (
  slot BIGINT, slot_start_date_time TIMESTAMP, clients BIGINT, slowest_client STRING, max_propagation_ms BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.head_partial (
  slot BIGINT, slot_start_date_time TIMESTAMP, clients BIGINT, avg_propagation_ms DOUBLE
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.tail_fill (
  slot BIGINT, slot_start_date_time TIMESTAMP, block_root STRING, first_seen_ms BIGINT
) USING DELTA;
