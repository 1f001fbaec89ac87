-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- create "new_personnel_count_slot" table
CREATE TABLE `new_personnel_count_slot` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `table_name` text NOT NULL, `slot` integer NOT NULL, `records` integer NOT NULL);
-- copy rows from old table "personnel_count_slot" to new temporary table "new_personnel_count_slot"
INSERT INTO `new_personnel_count_slot` (`id`, `table_name`, `slot`, `records`) SELECT `id`, `table_name`, `slot`, `records` FROM `personnel_count_slot`;
-- drop "personnel_count_slot" table after copying rows
DROP TABLE `personnel_count_slot`;
-- rename temporary table "new_personnel_count_slot" to "personnel_count_slot"
ALTER TABLE `new_personnel_count_slot` RENAME TO `personnel_count_slot`;
-- create index "countslot_table_name_slot" to table: "personnel_count_slot"
CREATE UNIQUE INDEX `countslot_table_name_slot` ON `personnel_count_slot` (`table_name`, `slot`);
-- create "new_personnel_derived" table
CREATE TABLE `new_personnel_derived` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `table_name` text NOT NULL, `structure` text NOT NULL, `trusted` integer NOT NULL, `since` integer NOT NULL DEFAULT (0));
-- copy rows from old table "personnel_derived" to new temporary table "new_personnel_derived"
INSERT INTO `new_personnel_derived` (`id`, `table_name`, `structure`, `trusted`) SELECT `id`, `table_name`, `structure`, `trusted` FROM `personnel_derived`;
-- drop "personnel_derived" table after copying rows
DROP TABLE `personnel_derived`;
-- rename temporary table "new_personnel_derived" to "personnel_derived"
ALTER TABLE `new_personnel_derived` RENAME TO `personnel_derived`;
-- create index "derivedstate_table_name_structure" to table: "personnel_derived"
CREATE UNIQUE INDEX `derivedstate_table_name_structure` ON `personnel_derived` (`table_name`, `structure`);
-- drop "personnel_record_count" table
DROP TABLE `personnel_record_count`;
-- create "personnel_replica" table
CREATE TABLE `personnel_replica` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `name` text NOT NULL, `version` text NOT NULL, `schema_version` integer NOT NULL, `started_at` integer NOT NULL, `seen_at` integer NOT NULL);
-- enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
