-- Databases of the example pipeline, named by the same placeholders as dependencies ({{external}},
-- {{transformation}}: the configured default databases). The admin tables are created by the services.
CREATE DATABASE IF NOT EXISTS {{external}};
CREATE DATABASE IF NOT EXISTS {{transformation}};
