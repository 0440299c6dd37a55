---
# A report over the last hour, rebuilt every five minutes (5-field cron, UTC).
type: scheduled
table: entity_leaderboard
schedule: "*/5 * * * *"
dependencies:
  - {{transformation}}.block_propagation_five_minute
tags: [report]
---
INSERT OVERWRITE {{ self.from }}
SELECT
  entity,
  count(*) AS blocks,
  avg(avg_propagation_ms) AS avg_propagation_ms,
  count_if(is_late) AS late_blocks,
  timestamp_seconds({{ task.start }}) AS report_date_time
FROM {{ ref("{{transformation}}.block_propagation_five_minute") }}
WHERE slot_start_date_time >= timestamp_seconds({{ task.start }} - 3600)
GROUP BY entity
