---
# Latest entity per validator: reference data refreshed on a schedule, without positions.
type: scheduled
table: validator_entities
schedule: "@every 1m"
dependencies:          # for templating and the DAG view only: scheduled models do not wait for data
  - {{external}}.validator_entity
tags: [reference, entity]
---
-- One row per validator; ties on updated_date_time keep the alphabetically first entity.
INSERT OVERWRITE {{ self.from }}
SELECT validator_index, entity, updated_date_time
FROM (
  SELECT
    validator_index,
    entity,
    updated_date_time,
    row_number() OVER (PARTITION BY validator_index ORDER BY updated_date_time DESC, entity) AS rn
  FROM {{ ref("{{external}}.validator_entity") }}
) AS ranked
WHERE rn = 1
