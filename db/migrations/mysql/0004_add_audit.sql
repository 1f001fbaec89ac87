-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- create "personnel_audit" table
CREATE TABLE `personnel_audit` (`id` bigint NOT NULL AUTO_INCREMENT, `at` bigint NOT NULL, `actor_id` bigint NULL, `actor_username` varchar(150) NULL, `actor_command` varchar(64) NULL, `request_id` varchar(128) NULL, `resource` varchar(64) NOT NULL, `record_id` bigint NOT NULL, `action` varchar(8) NOT NULL, `changes` mediumtext NOT NULL, PRIMARY KEY (`id`), INDEX `auditentry_resource_record_id` (`resource`, `record_id`), INDEX `auditentry_actor_username` (`actor_username`), INDEX `auditentry_request_id` (`request_id`), INDEX `auditentry_at` (`at`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_change" table
CREATE TABLE `personnel_change` (`id` bigint NOT NULL AUTO_INCREMENT, `seq` bigint NULL, `table_name` varchar(64) NOT NULL, `record_id` bigint NOT NULL, `deleted` bool NOT NULL, `at` bigint NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `change_seq` (`seq`), INDEX `change_table_name_seq` (`table_name`, `seq`), INDEX `change_table_name_record_id` (`table_name`, `record_id`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_feed_horizon" table
CREATE TABLE `personnel_feed_horizon` (`id` bigint NOT NULL AUTO_INCREMENT, `table_name` varchar(64) NOT NULL, `seq` bigint NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `table_name` (`table_name`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- record the state of "feed" of "personnel_department"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_department', 'feed', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END, 4);
-- record the state of "feed" of "personnel_area"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_area', 'feed', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END, 4);
