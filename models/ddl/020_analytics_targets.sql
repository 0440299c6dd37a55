-- Target tables of the transformations whose author writes the statements (write strategy `sql`, scheduled and
-- exec models): nothing in them says the table's columns. The product creates the others from their query before
-- their first task (`cbt ddl MODEL` prints what it would run). Column order matters for INSERT statements.

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

CREATE TABLE IF NOT EXISTS {{transformation}}.block_gas (
  block_number BIGINT,
  block_timestamp TIMESTAMP,
  tx_count BIGINT,
  total_gas_used BIGINT,
  total_value_wei DECIMAL(38, 0)
) USING DELTA;
