---
# Latest entity per validator, every minute (5-field cron); read by the chain's last level.
type: scheduled
table: entities_now
schedule: "* * * * *"
dependencies:
  - "{{external}}.validator_entity"
---
INSERT OVERWRITE {{ self.from }}
SELECT validator_index, entity, updated_date_time
FROM (
  SELECT validator_index, entity, updated_date_time,
         row_number() OVER (PARTITION BY validator_index ORDER BY updated_date_time DESC, entity) AS rn
  FROM {{ dep["{{external}}"].validator_entity.from }}
) AS ranked
WHERE rn = 1
