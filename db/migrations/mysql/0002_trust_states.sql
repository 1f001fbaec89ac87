-- Written by hand: this step moves data. It turns the state a database made before versioned
-- migrations kept into what this version keeps (one trust row per structure, record counts in
-- personnel_count_slot on every database), and records the state of the shipped resources'
-- structures in a new database; and it drops what earlier versions searched with. Step 3 then
-- changes the tables.

-- The closure is trusted where it and its subtree counts both were.
UPDATE `personnel_derived` SET `trusted` = 0 WHERE `structure` = 'closure' AND `table_name` IN (
  SELECT `table_name` FROM (SELECT `table_name` FROM `personnel_derived` WHERE `structure` = 'subtree count' AND `trusted` = 0) AS s);
-- The counts are trusted where the id blocks, the change number and the record count all were.
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT `table_name`, 'counts', MIN(`trusted`) FROM `personnel_derived` WHERE `structure` IN ('id blocks', 'change number') GROUP BY `table_name`;
UPDATE `personnel_derived` SET `trusted` = 0 WHERE `structure` = 'counts' AND `table_name` IN (
  SELECT `table_name` FROM (SELECT `table_name` FROM `personnel_count_slot` WHERE `trusted` = 0) AS s);
DELETE FROM `personnel_derived` WHERE `structure` IN ('subtree count', 'id blocks', 'change number');

-- A new database: the shipped resources' structures, trusted while their tables are empty.
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_department', 'substring:dept_code_fold', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_department' AND `structure` = 'substring:dept_code_fold');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_department', 'substring:dept_name_fold', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_department' AND `structure` = 'substring:dept_name_fold');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_department', 'closure', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_department' AND `structure` = 'closure');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_department', 'counts', CASE WHEN EXISTS (SELECT 1 FROM `personnel_department`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_department' AND `structure` = 'counts');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_area', 'substring:area_code_fold', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_area' AND `structure` = 'substring:area_code_fold');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_area', 'substring:area_name_fold', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_area' AND `structure` = 'substring:area_name_fold');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_area', 'closure', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_area' AND `structure` = 'closure');
INSERT INTO `personnel_derived` (`table_name`, `structure`, `trusted`)
SELECT 'personnel_area', 'counts', CASE WHEN EXISTS (SELECT 1 FROM `personnel_area`) THEN 0 ELSE 1 END FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM `personnel_derived` WHERE `table_name` = 'personnel_area' AND `structure` = 'counts');
