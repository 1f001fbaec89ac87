-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.
-- create "personnel_position" table
CREATE TABLE `personnel_position` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `position_code` text NOT NULL, `position_code_fold` text NOT NULL, `position_name` text NOT NULL, `position_name_fold` text NOT NULL, `parent_position_id` integer NULL, CONSTRAINT `personnel_position_personnel_position_children` FOREIGN KEY (`parent_position_id`) REFERENCES `personnel_position` (`id`) ON DELETE RESTRICT);
-- create index "position_position_code_fold" to table: "personnel_position"
CREATE UNIQUE INDEX `position_position_code_fold` ON `personnel_position` (`position_code_fold`);
-- create index "position_position_name_fold_position_name" to table: "personnel_position"
CREATE INDEX `position_position_name_fold_position_name` ON `personnel_position` (`position_name_fold`, `position_name`);
-- create index "position_parent_position_id" to table: "personnel_position"
CREATE INDEX `position_parent_position_id` ON `personnel_position` (`parent_position_id`);
-- create index "position_id" to table: "personnel_position"
CREATE INDEX `position_id` ON `personnel_position` (`id`);
-- create "personnel_position_below" table
CREATE TABLE `personnel_position_below` (`ancestor` integer NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`ancestor`, `slot`)) WITHOUT ROWID;
-- create "personnel_position_blocks" table
CREATE TABLE `personnel_position_blocks` (`block` bigint NOT NULL, `slot` integer NOT NULL, `records` bigint NOT NULL, PRIMARY KEY (`block`, `slot`)) WITHOUT ROWID;
-- create "personnel_position_changes" table
CREATE TABLE `personnel_position_changes` (`slot` integer NOT NULL, `changes` bigint NOT NULL, PRIMARY KEY (`slot`)) WITHOUT ROWID;
-- create "personnel_position_closure" table
CREATE TABLE `personnel_position_closure` (`descendant` integer NOT NULL, `ancestor` integer NOT NULL, `depth` integer NOT NULL, PRIMARY KEY (`descendant`, `ancestor`), CONSTRAINT `personnel_position_closure_fk` FOREIGN KEY (`descendant`) REFERENCES `personnel_position` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_position_closure_down" to table: "personnel_position_closure"
CREATE INDEX `personnel_position_closure_down` ON `personnel_position_closure` (`ancestor`, `descendant`, `depth`);
-- create "personnel_position_position_code_fold_substr" table
CREATE TABLE `personnel_position_position_code_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_position_position_code_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_position` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_position_position_code_fold_substr_gram" to table: "personnel_position_position_code_fold_substr"
CREATE INDEX `personnel_position_position_code_fold_substr_gram` ON `personnel_position_position_code_fold_substr` (`gram`, `lcp`, `id`);
-- create "personnel_position_position_name_fold_substr" table
CREATE TABLE `personnel_position_position_name_fold_substr` (`id` integer NOT NULL, `gram` text NOT NULL, `lcp` integer NOT NULL, PRIMARY KEY (`id`, `gram`), CONSTRAINT `personnel_position_position_name_fold_substr_fk` FOREIGN KEY (`id`) REFERENCES `personnel_position` (`id`) ON UPDATE NO ACTION ON DELETE CASCADE) WITHOUT ROWID;
-- create index "personnel_position_position_name_fold_substr_gram" to table: "personnel_position_position_name_fold_substr"
CREATE INDEX `personnel_position_position_name_fold_substr_gram` ON `personnel_position_position_name_fold_substr` (`gram`, `lcp`, `id`);
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
