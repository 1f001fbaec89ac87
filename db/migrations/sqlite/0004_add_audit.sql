-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- create "personnel_audit" table
CREATE TABLE `personnel_audit` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `at` integer NOT NULL, `actor_id` integer NULL, `actor_username` text NULL, `actor_command` text NULL, `request_id` text NULL, `resource` text NOT NULL, `record_id` integer NOT NULL, `action` text NOT NULL, `changes` text NOT NULL);
-- create index "auditentry_resource_record_id" to table: "personnel_audit"
CREATE INDEX `auditentry_resource_record_id` ON `personnel_audit` (`resource`, `record_id`);
-- create index "auditentry_actor_username" to table: "personnel_audit"
CREATE INDEX `auditentry_actor_username` ON `personnel_audit` (`actor_username`);
-- create index "auditentry_request_id" to table: "personnel_audit"
CREATE INDEX `auditentry_request_id` ON `personnel_audit` (`request_id`);
-- create index "auditentry_at" to table: "personnel_audit"
CREATE INDEX `auditentry_at` ON `personnel_audit` (`at`);
-- create "personnel_change" table
CREATE TABLE `personnel_change` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `seq` integer NULL, `table_name` text NOT NULL, `record_id` integer NOT NULL, `deleted` bool NOT NULL, `at` integer NOT NULL);
-- create index "change_seq" to table: "personnel_change"
CREATE UNIQUE INDEX `change_seq` ON `personnel_change` (`seq`);
-- create index "change_table_name_seq" to table: "personnel_change"
CREATE INDEX `change_table_name_seq` ON `personnel_change` (`table_name`, `seq`);
-- create index "change_table_name_record_id" to table: "personnel_change"
CREATE INDEX `change_table_name_record_id` ON `personnel_change` (`table_name`, `record_id`);
-- create "personnel_feed_horizon" table
CREATE TABLE `personnel_feed_horizon` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `table_name` text NOT NULL, `seq` integer NOT NULL);
-- create index "personnel_feed_horizon_table_name_key" to table: "personnel_feed_horizon"
CREATE UNIQUE INDEX `personnel_feed_horizon_table_name_key` ON `personnel_feed_horizon` (`table_name`);
-- record the state of "feed" of "personnel_department"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_department', 'feed', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END, 4);
-- record the state of "feed" of "personnel_area"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_area', 'feed', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END, 4);
