-- Step 1: the schema of a database made before versioned migrations (by commit 2bd65ad, inspected with Atlas).
-- A database made then is recorded as having had this step; a new one starts here.
-- create "personnel_area" table
CREATE TABLE `personnel_area` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `area_code` text NOT NULL, `area_code_fold` text NOT NULL, `area_name` text NOT NULL, `area_name_fold` text NOT NULL, `parent_area_id` integer NULL, CONSTRAINT `personnel_area_personnel_area_children` FOREIGN KEY (`parent_area_id`) REFERENCES `personnel_area` (`id`) ON UPDATE NO ACTION ON DELETE RESTRICT);
-- create index "area_area_code_fold" to table: "personnel_area"
CREATE UNIQUE INDEX `area_area_code_fold` ON `personnel_area` (`area_code_fold`);
-- create index "area_area_name_fold_area_name" to table: "personnel_area"
CREATE INDEX `area_area_name_fold_area_name` ON `personnel_area` (`area_name_fold`, `area_name`);
-- create index "area_parent_area_id" to table: "personnel_area"
CREATE INDEX `area_parent_area_id` ON `personnel_area` (`parent_area_id`);
-- create index "area_id" to table: "personnel_area"
CREATE INDEX `area_id` ON `personnel_area` (`id`);
-- create "personnel_auth_token" table
CREATE TABLE `personnel_auth_token` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `salt` text NOT NULL, `key_hash` text NOT NULL, `created_at` datetime NOT NULL, `user_id` integer NOT NULL, CONSTRAINT `personnel_auth_token_personnel_user_user` FOREIGN KEY (`user_id`) REFERENCES `personnel_user` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE);
-- create index "personnel_auth_token_key_hash_key" to table: "personnel_auth_token"
CREATE UNIQUE INDEX `personnel_auth_token_key_hash_key` ON `personnel_auth_token` (`key_hash`);
-- create index "authtoken_user_id" to table: "personnel_auth_token"
CREATE UNIQUE INDEX `authtoken_user_id` ON `personnel_auth_token` (`user_id`);
-- create "personnel_count_slot" table
CREATE TABLE `personnel_count_slot` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `table_name` text NOT NULL, `slot` integer NOT NULL, `records` integer NOT NULL, `trusted` integer NOT NULL);
-- create index "countslot_table_name_slot" to table: "personnel_count_slot"
CREATE UNIQUE INDEX `countslot_table_name_slot` ON `personnel_count_slot` (`table_name`, `slot`);
-- create "personnel_department" table
CREATE TABLE `personnel_department` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `dept_code` text NOT NULL, `dept_code_fold` text NOT NULL, `dept_name` text NOT NULL, `dept_name_fold` text NOT NULL, `parent_dept_id` integer NULL, CONSTRAINT `personnel_department_personnel_department_children` FOREIGN KEY (`parent_dept_id`) REFERENCES `personnel_department` (`id`) ON UPDATE NO ACTION ON DELETE RESTRICT);
-- create index "department_dept_code_fold" to table: "personnel_department"
CREATE UNIQUE INDEX `department_dept_code_fold` ON `personnel_department` (`dept_code_fold`);
-- create index "department_dept_name_fold_dept_name" to table: "personnel_department"
CREATE INDEX `department_dept_name_fold_dept_name` ON `personnel_department` (`dept_name_fold`, `dept_name`);
-- create index "department_parent_dept_id" to table: "personnel_department"
CREATE INDEX `department_parent_dept_id` ON `personnel_department` (`parent_dept_id`);
-- create index "department_id" to table: "personnel_department"
CREATE INDEX `department_id` ON `personnel_department` (`id`);
-- create "personnel_derived" table
CREATE TABLE `personnel_derived` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `table_name` text NOT NULL, `structure` text NOT NULL, `trusted` integer NOT NULL);
-- create index "derivedstate_table_name_structure" to table: "personnel_derived"
CREATE UNIQUE INDEX `derivedstate_table_name_structure` ON `personnel_derived` (`table_name`, `structure`);
-- create "personnel_login_failure" table
CREATE TABLE `personnel_login_failure` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `subject` text NOT NULL, `at` datetime NOT NULL);
-- create index "loginfailure_subject_at" to table: "personnel_login_failure"
CREATE INDEX `loginfailure_subject_at` ON `personnel_login_failure` (`subject`, `at`);
-- create index "loginfailure_at" to table: "personnel_login_failure"
CREATE INDEX `loginfailure_at` ON `personnel_login_failure` (`at`);
-- create "personnel_user" table
CREATE TABLE `personnel_user` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `username` text NOT NULL, `username_key` text NULL, `token_generation` integer NOT NULL DEFAULT 0, `password_hash` text NOT NULL, `role` text NOT NULL, `active` bool NOT NULL DEFAULT true, `tokens_valid_after` datetime NOT NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL);
-- create index "personnel_user_username_key" to table: "personnel_user"
CREATE UNIQUE INDEX `personnel_user_username_key` ON `personnel_user` (`username`);
-- create index "personnel_user_username_key_key" to table: "personnel_user"
CREATE UNIQUE INDEX `personnel_user_username_key_key` ON `personnel_user` (`username_key`);
-- create "personnel_record_count" table
CREATE TABLE `personnel_record_count` (`table_name` text NOT NULL, `records` integer NOT NULL, PRIMARY KEY (`table_name`));
-- create "personnel_area_area_code_fold_substr" table
CREATE TABLE `personnel_area_area_code_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_area_area_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_area` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_area_area_code_fold_substr_gram" to table: "personnel_area_area_code_fold_substr"
CREATE INDEX `personnel_area_area_code_fold_substr_gram` ON `personnel_area_area_code_fold_substr` (`gram`, `lcp`, `id`);
-- create "personnel_area_area_name_fold_substr" table
CREATE TABLE `personnel_area_area_name_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_area_area_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_area` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_area_area_name_fold_substr_gram" to table: "personnel_area_area_name_fold_substr"
CREATE INDEX `personnel_area_area_name_fold_substr_gram` ON `personnel_area_area_name_fold_substr` (`gram`, `lcp`, `id`);
-- create "personnel_area_closure" table
CREATE TABLE `personnel_area_closure` (`descendant` integer NOT NULL, `ancestor` integer NOT NULL, `depth` integer NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), CONSTRAINT `personnel_area_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_area` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_area_closure_down" to table: "personnel_area_closure"
CREATE INDEX `personnel_area_closure_down` ON `personnel_area_closure` (`ancestor`, `descendant`, `depth`);
-- create "personnel_area_below" table
CREATE TABLE `personnel_area_below` (`ancestor` integer NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`)) WITHOUT ROWID;
-- create "personnel_area_blocks" table
CREATE TABLE `personnel_area_blocks` (`block` bigint NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`)) WITHOUT ROWID;
-- create "personnel_area_changes" table
CREATE TABLE `personnel_area_changes` (`slot` integer NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`)) WITHOUT ROWID;
-- create "personnel_department_dept_code_fold_substr" table
CREATE TABLE `personnel_department_dept_code_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_department_dept_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_department` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_department_dept_code_fold_substr_gram" to table: "personnel_department_dept_code_fold_substr"
CREATE INDEX `personnel_department_dept_code_fold_substr_gram` ON `personnel_department_dept_code_fold_substr` (`gram`, `lcp`, `id`);
-- create "personnel_department_dept_name_fold_substr" table
CREATE TABLE `personnel_department_dept_name_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_department_dept_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_department` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_department_dept_name_fold_substr_gram" to table: "personnel_department_dept_name_fold_substr"
CREATE INDEX `personnel_department_dept_name_fold_substr_gram` ON `personnel_department_dept_name_fold_substr` (`gram`, `lcp`, `id`);
-- create "personnel_department_closure" table
CREATE TABLE `personnel_department_closure` (`descendant` integer NOT NULL, `ancestor` integer NOT NULL, `depth` integer NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), CONSTRAINT `personnel_department_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_department` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_department_closure_down" to table: "personnel_department_closure"
CREATE INDEX `personnel_department_closure_down` ON `personnel_department_closure` (`ancestor`, `descendant`, `depth`);
-- create "personnel_department_below" table
CREATE TABLE `personnel_department_below` (`ancestor` integer NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`)) WITHOUT ROWID;
-- create "personnel_department_blocks" table
CREATE TABLE `personnel_department_blocks` (`block` bigint NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`)) WITHOUT ROWID;
-- create "personnel_department_changes" table
CREATE TABLE `personnel_department_changes` (`slot` integer NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`)) WITHOUT ROWID;
