-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- create "personnel_position" table
CREATE TABLE `personnel_position` (`id` bigint NOT NULL AUTO_INCREMENT, `position_code` varchar(50) NOT NULL, `position_code_fold` varchar(150) NOT NULL, `position_name` varchar(100) NOT NULL, `position_name_fold` varchar(300) NOT NULL, `parent_position_id` bigint NULL, PRIMARY KEY (`id`), UNIQUE INDEX `position_position_code_fold` (`position_code_fold`), INDEX `position_position_name_fold_position_name` (`position_name_fold`, `position_name`), INDEX `position_parent_position_id` (`parent_position_id`), INDEX `position_id` (`id`), CONSTRAINT `personnel_position_personnel_position_children` FOREIGN KEY (`parent_position_id`) REFERENCES `personnel_position` (`id`) ON DELETE RESTRICT) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_position_below" table
CREATE TABLE `personnel_position_below` (`ancestor` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`));
-- create "personnel_position_blocks" table
CREATE TABLE `personnel_position_blocks` (`block` bigint NOT NULL, `slot` int NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`));
-- create "personnel_position_changes" table
CREATE TABLE `personnel_position_changes` (`slot` int NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`));
-- create "personnel_position_closure" table
CREATE TABLE `personnel_position_closure` (`descendant` bigint NOT NULL, `ancestor` bigint NOT NULL, `depth` int NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), INDEX `personnel_position_closure_down` (`ancestor`, `descendant`, `depth`), CONSTRAINT `personnel_position_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_position` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE);
-- create "personnel_position_position_code_fold_substr" table
CREATE TABLE `personnel_position_position_code_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_position_position_code_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_position_position_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_position` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- create "personnel_position_position_name_fold_substr" table
CREATE TABLE `personnel_position_position_name_fold_substr` (`id` bigint NOT NULL, `gram` varchar(16) NOT NULL, `lcp` smallint NOT NULL, PRIMARY KEY (`id`, `gram`), INDEX `personnel_position_position_name_fold_substr_gram` (`gram`, `lcp`), CONSTRAINT `personnel_position_position_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_position` (`id`) ON UPDATE RESTRICT ON DELETE CASCADE) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin;
-- record the state of "substring:position_code_fold" of "personnel_position"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_position', 'substring:position_code_fold', 1, 5);
-- record the state of "substring:position_name_fold" of "personnel_position"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_position', 'substring:position_name_fold', 1, 5);
-- record the state of "closure" of "personnel_position"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_position', 'closure', 1, 5);
-- record the state of "counts" of "personnel_position"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_position', 'counts', 1, 5);
-- record the state of "feed" of "personnel_position"
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`, `since`) VALUES ('personnel_position', 'feed', 1, 5);
