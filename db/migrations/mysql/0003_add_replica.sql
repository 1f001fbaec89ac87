-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- modify "personnel_count_slot" table
ALTER TABLE `personnel_count_slot` DROP COLUMN `trusted`;
-- modify "personnel_derived" table
ALTER TABLE `personnel_derived` ADD COLUMN `since` bigint NOT NULL DEFAULT 0;
-- create "personnel_replica" table
CREATE TABLE `personnel_replica` (`id` bigint NOT NULL AUTO_INCREMENT, `name` varchar(255) NOT NULL, `version` varchar(255) NOT NULL, `schema_version` bigint NOT NULL, `started_at` bigint NOT NULL, `seen_at` bigint NOT NULL, PRIMARY KEY (`id`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
