-- Target tables of the transformations. Column order matters for INSERT statements: keep it in step with the SQL.

CREATE TABLE IF NOT EXISTS {{transformation}}.block_propagation_minute (
  slot BIGINT,
  slot_start_date_time TIMESTAMP,
  block_root STRING,
  proposer_index BIGINT,
  client_count BIGINT,
  avg_propagation_ms DOUBLE,
  min_propagation_ms BIGINT,
  max_propagation_ms BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.block_propagation_two_minute (
  slot BIGINT,
  slot_start_date_time TIMESTAMP,
  block_root STRING,
  proposer_index BIGINT,
  avg_propagation_ms DOUBLE,
  propagation_spread_ms BIGINT,
  propagation_class STRING
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.block_propagation_five_minute (
  slot BIGINT,
  slot_start_date_time TIMESTAMP,
  block_root STRING,
  proposer_index BIGINT,
  entity STRING,
  avg_propagation_ms DOUBLE,
  propagation_class STRING,
  is_late BOOLEAN
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.validator_entities (
  validator_index BIGINT,
  entity STRING,
  updated_date_time TIMESTAMP
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.entity_leaderboard (
  entity STRING,
  blocks BIGINT,
  avg_propagation_ms DOUBLE,
  late_blocks BIGINT,
  report_date_time TIMESTAMP
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.transactions (
  block_number BIGINT,
  block_timestamp TIMESTAMP,
  tx_hash STRING,
  tx_index INT,
  from_address STRING,
  to_address STRING,
  value_wei DECIMAL(38, 0),
  gas_used BIGINT
) USING DELTA;

CREATE TABLE IF NOT EXISTS {{transformation}}.block_gas (
  block_number BIGINT,
  block_timestamp TIMESTAMP,
  tx_count BIGINT,
  total_gas_used BIGINT,
  total_value_wei DECIMAL(38, 0)
) USING DELTA;
