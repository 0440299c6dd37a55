-- Databases of the example pipeline. The admin tables (admin.cbt_*) are created by `cbt admin init`.
CREATE DATABASE IF NOT EXISTS ethereum;
CREATE DATABASE IF NOT EXISTS analytics;
