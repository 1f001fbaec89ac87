-- Step 1: the schema of a database made before versioned migrations (by commit 2bd65ad, inspected with Atlas).
-- A database made then is recorded as having had this step; a new one starts here.
-- create "personnel_count_slot" table
CREATE TABLE `personnel_count_slot` (`id` bigint NOT NULL AUTO_INCREMENT, `table_name` varchar(64) NOT NULL, `slot` bigint NOT NULL, `records` bigint NOT NULL, `trusted` bigint NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `countslot_table_name_slot` (`table_name`, `slot`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_department_below" table
CREATE TABLE `personnel_department_below` (`ancestor` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`));
-- create "personnel_login_failure" table
CREATE TABLE `personnel_login_failure` (`id` bigint NOT NULL AUTO_INCREMENT, `subject` varchar(200) NOT NULL, `at` datetime(3) NOT NULL, PRIMARY KEY (`id`), INDEX `loginfailure_at` (`at`), INDEX `loginfailure_subject_at` (`subject`, `at`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_derived" table
CREATE TABLE `personnel_derived` (`id` bigint NOT NULL AUTO_INCREMENT, `table_name` varchar(64) NOT NULL, `structure` varchar(128) NOT NULL, `trusted` bigint NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `derivedstate_table_name_structure` (`table_name`, `structure`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_area_blocks" table
CREATE TABLE `personnel_area_blocks` (`block` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`));
-- create "personnel_area_changes" table
CREATE TABLE `personnel_area_changes` (`slot` int NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`));
-- create "personnel_department_changes" table
CREATE TABLE `personnel_department_changes` (`slot` int NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`));
-- create "personnel_department_blocks" table
CREATE TABLE `personnel_department_blocks` (`block` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`));
-- create "personnel_area_below" table
CREATE TABLE `personnel_area_below` (`ancestor` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`));
-- create "personnel_area" table
CREATE TABLE `personnel_area` (`id` bigint NOT NULL AUTO_INCREMENT, `area_code` varchar(50) NOT NULL, `area_code_fold` varchar(150) NOT NULL, `area_name` varchar(100) NOT NULL, `area_name_fold` varchar(300) NOT NULL, `parent_area_id` bigint NULL, PRIMARY KEY (`id`), UNIQUE INDEX `area_area_code_fold` (`area_code_fold`), INDEX `area_area_name_fold_area_name` (`area_name_fold`, `area_name`), INDEX `area_id` (`id`), INDEX `area_parent_area_id` (`parent_area_id`), CONSTRAINT `personnel_area_personnel_area_children` FOREIGN KEY (`parent_area_id`) REFERENCES `personnel_area` (`id`) ON UPDATE RESTRICT ON DELETE RESTRICT) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_area_area_code_fold_substr" table
CREATE TABLE `personnel_area_area_code_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_area_area_code_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_area_area_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_area` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_area_area_name_fold_substr" table
CREATE TABLE `personnel_area_area_name_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_area_area_name_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_area_area_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_area` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_area_closure" table
CREATE TABLE `personnel_area_closure` (`descendant` bigint NOT NULL, `ancestor` bigint NOT NULL, `depth` int NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), INDEX `personnel_area_closure_down` (`ancestor`, `descendant`, `depth`), CONSTRAINT `personnel_area_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_area` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE);
-- create "personnel_user" table
CREATE TABLE `personnel_user` (`id` bigint NOT NULL AUTO_INCREMENT, `username` varchar(150) NOT NULL, `username_key` varchar(450) NULL, `token_generation` bigint NOT NULL DEFAULT 0, `password_hash` varchar(255) NOT NULL, `role` enum('editor','viewer') NOT NULL, `active` bool NOT NULL DEFAULT 1, `tokens_valid_after` datetime NOT NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `username` (`username`), UNIQUE INDEX `username_key` (`username_key`)) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_auth_token" table
CREATE TABLE `personnel_auth_token` (`id` bigint NOT NULL AUTO_INCREMENT, `salt` varchar(64) NOT NULL, `key_hash` varchar(64) NOT NULL, `created_at` datetime NOT NULL, `user_id` bigint NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `authtoken_user_id` (`user_id`), UNIQUE INDEX `key_hash` (`key_hash`), CONSTRAINT `personnel_auth_token_personnel_user_user` FOREIGN KEY (`user_id`) REFERENCES `personnel_user` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_department" table
CREATE TABLE `personnel_department` (`id` bigint NOT NULL AUTO_INCREMENT, `dept_code` varchar(50) NOT NULL, `dept_code_fold` varchar(150) NOT NULL, `dept_name` varchar(100) NOT NULL, `dept_name_fold` varchar(300) NOT NULL, `parent_dept_id` bigint NULL, PRIMARY KEY (`id`), UNIQUE INDEX `department_dept_code_fold` (`dept_code_fold`), INDEX `department_dept_name_fold_dept_name` (`dept_name_fold`, `dept_name`), INDEX `department_id` (`id`), INDEX `department_parent_dept_id` (`parent_dept_id`), CONSTRAINT `personnel_department_personnel_department_children` FOREIGN KEY (`parent_dept_id`) REFERENCES `personnel_department` (`id`) ON UPDATE RESTRICT ON DELETE RESTRICT) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_department_closure" table
CREATE TABLE `personnel_department_closure` (`descendant` bigint NOT NULL, `ancestor` bigint NOT NULL, `depth` int NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), INDEX `personnel_department_closure_down` (`ancestor`, `descendant`, `depth`), CONSTRAINT `personnel_department_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_department` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE);
-- create "personnel_department_dept_code_fold_substr" table
CREATE TABLE `personnel_department_dept_code_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_department_dept_code_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_department_dept_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_department` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_department_dept_name_fold_substr" table
CREATE TABLE `personnel_department_dept_name_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_department_dept_name_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_department_dept_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_department` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
