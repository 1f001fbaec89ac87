table "personnel_area" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "area_code" {
    null = false
    type = text
  }
  column "area_code_fold" {
    null = false
    type = text
  }
  column "area_name" {
    null = false
    type = text
  }
  column "area_name_fold" {
    null = false
    type = text
  }
  column "parent_area_id" {
    null = true
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  foreign_key "personnel_area_personnel_area_children" {
    columns     = [column.parent_area_id]
    ref_columns = [column.id]
    on_delete   = RESTRICT
  }
  index "area_area_code_fold" {
    unique  = true
    columns = [column.area_code_fold]
  }
  index "area_area_name_fold_area_name" {
    columns = [column.area_name_fold, column.area_name]
  }
  index "area_parent_area_id" {
    columns = [column.parent_area_id]
  }
  index "area_id" {
    columns = [column.id]
  }
}
table "personnel_area_area_code_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_area_area_code_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_area.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_area_area_code_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_area_area_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_area_area_name_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_area.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_area_area_name_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_area_below" {
  schema = schema.main
  column "ancestor" {
    null = false
    type = integer
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.ancestor, column.slot]
  }
  without_rowid = true
}
table "personnel_area_blocks" {
  schema = schema.main
  column "block" {
    null = false
    type = bigint
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.block, column.slot]
  }
  without_rowid = true
}
table "personnel_area_changes" {
  schema = schema.main
  column "slot" {
    null = false
    type = integer
  }
  column "changes" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.slot]
  }
  without_rowid = true
}
table "personnel_area_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = integer
  }
  column "ancestor" {
    null = false
    type = integer
  }
  column "depth" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.descendant, column.ancestor]
  }
  foreign_key "personnel_area_closure_fk" {
    columns     = [column.descendant]
    ref_columns = [table.personnel_area.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_area_closure_down" {
    columns = [column.ancestor, column.descendant, column.depth]
  }
  without_rowid = true
}
table "personnel_audit" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "at" {
    null = false
    type = integer
  }
  column "actor_id" {
    null = true
    type = integer
  }
  column "actor_username" {
    null = true
    type = text
  }
  column "actor_command" {
    null = true
    type = text
  }
  column "request_id" {
    null = true
    type = text
  }
  column "resource" {
    null = false
    type = text
  }
  column "record_id" {
    null = false
    type = integer
  }
  column "action" {
    null = false
    type = text
  }
  column "changes" {
    null = false
    type = text
  }
  primary_key {
    columns = [column.id]
  }
  index "auditentry_resource_record_id" {
    columns = [column.resource, column.record_id]
  }
  index "auditentry_actor_username" {
    columns = [column.actor_username]
  }
  index "auditentry_request_id" {
    columns = [column.request_id]
  }
  index "auditentry_at" {
    columns = [column.at]
  }
}
table "personnel_auth_token" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "salt" {
    null = false
    type = text
  }
  column "key_hash" {
    null = false
    type = text
  }
  column "created_at" {
    null = false
    type = datetime
  }
  column "user_id" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  foreign_key "personnel_auth_token_personnel_user_user" {
    columns     = [column.user_id]
    ref_columns = [table.personnel_user.column.id]
    on_delete   = CASCADE
  }
  index "personnel_auth_token_key_hash_key" {
    unique  = true
    columns = [column.key_hash]
  }
  index "authtoken_user_id" {
    unique  = true
    columns = [column.user_id]
  }
}
table "personnel_change" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "seq" {
    null = true
    type = integer
  }
  column "table_name" {
    null = false
    type = text
  }
  column "record_id" {
    null = false
    type = integer
  }
  column "deleted" {
    null = false
    type = bool
  }
  column "at" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  index "change_seq" {
    unique  = true
    columns = [column.seq]
  }
  index "change_table_name_seq" {
    columns = [column.table_name, column.seq]
  }
  index "change_table_name_record_id" {
    columns = [column.table_name, column.record_id]
  }
}
table "personnel_count_slot" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "table_name" {
    null = false
    type = text
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  index "countslot_table_name_slot" {
    unique  = true
    columns = [column.table_name, column.slot]
  }
}
table "personnel_department" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "dept_code" {
    null = false
    type = text
  }
  column "dept_code_fold" {
    null = false
    type = text
  }
  column "dept_name" {
    null = false
    type = text
  }
  column "dept_name_fold" {
    null = false
    type = text
  }
  column "parent_dept_id" {
    null = true
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  foreign_key "personnel_department_personnel_department_children" {
    columns     = [column.parent_dept_id]
    ref_columns = [column.id]
    on_delete   = RESTRICT
  }
  index "department_dept_code_fold" {
    unique  = true
    columns = [column.dept_code_fold]
  }
  index "department_dept_name_fold_dept_name" {
    columns = [column.dept_name_fold, column.dept_name]
  }
  index "department_parent_dept_id" {
    columns = [column.parent_dept_id]
  }
  index "department_id" {
    columns = [column.id]
  }
}
table "personnel_department_below" {
  schema = schema.main
  column "ancestor" {
    null = false
    type = integer
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.ancestor, column.slot]
  }
  without_rowid = true
}
table "personnel_department_blocks" {
  schema = schema.main
  column "block" {
    null = false
    type = bigint
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.block, column.slot]
  }
  without_rowid = true
}
table "personnel_department_changes" {
  schema = schema.main
  column "slot" {
    null = false
    type = integer
  }
  column "changes" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.slot]
  }
  without_rowid = true
}
table "personnel_department_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = integer
  }
  column "ancestor" {
    null = false
    type = integer
  }
  column "depth" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.descendant, column.ancestor]
  }
  foreign_key "personnel_department_closure_fk" {
    columns     = [column.descendant]
    ref_columns = [table.personnel_department.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_department_closure_down" {
    columns = [column.ancestor, column.descendant, column.depth]
  }
  without_rowid = true
}
table "personnel_department_dept_code_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_department_dept_code_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_department.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_department_dept_code_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_department_dept_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_department_dept_name_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_department.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_department_dept_name_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_derived" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "table_name" {
    null = false
    type = text
  }
  column "structure" {
    null = false
    type = text
  }
  column "trusted" {
    null = false
    type = integer
  }
  column "since" {
    null    = false
    type    = integer
    default = sql("0")
  }
  primary_key {
    columns = [column.id]
  }
  index "derivedstate_table_name_structure" {
    unique  = true
    columns = [column.table_name, column.structure]
  }
}
table "personnel_feed_horizon" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "table_name" {
    null = false
    type = text
  }
  column "seq" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  index "personnel_feed_horizon_table_name_key" {
    unique  = true
    columns = [column.table_name]
  }
}
table "personnel_login_failure" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "subject" {
    null = false
    type = text
  }
  column "at" {
    null = false
    type = datetime
  }
  primary_key {
    columns = [column.id]
  }
  index "loginfailure_subject_at" {
    columns = [column.subject, column.at]
  }
  index "loginfailure_at" {
    columns = [column.at]
  }
}
table "personnel_position" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "position_code" {
    null = false
    type = text
  }
  column "position_code_fold" {
    null = false
    type = text
  }
  column "position_name" {
    null = false
    type = text
  }
  column "position_name_fold" {
    null = false
    type = text
  }
  column "parent_position_id" {
    null = true
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
  foreign_key "personnel_position_personnel_position_children" {
    columns     = [column.parent_position_id]
    ref_columns = [column.id]
    on_delete   = RESTRICT
  }
  index "position_position_code_fold" {
    unique  = true
    columns = [column.position_code_fold]
  }
  index "position_position_name_fold_position_name" {
    columns = [column.position_name_fold, column.position_name]
  }
  index "position_parent_position_id" {
    columns = [column.parent_position_id]
  }
  index "position_id" {
    columns = [column.id]
  }
}
table "personnel_position_below" {
  schema = schema.main
  column "ancestor" {
    null = false
    type = integer
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.ancestor, column.slot]
  }
  without_rowid = true
}
table "personnel_position_blocks" {
  schema = schema.main
  column "block" {
    null = false
    type = bigint
  }
  column "slot" {
    null = false
    type = integer
  }
  column "records" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.block, column.slot]
  }
  without_rowid = true
}
table "personnel_position_changes" {
  schema = schema.main
  column "slot" {
    null = false
    type = integer
  }
  column "changes" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.slot]
  }
  without_rowid = true
}
table "personnel_position_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = integer
  }
  column "ancestor" {
    null = false
    type = integer
  }
  column "depth" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.descendant, column.ancestor]
  }
  foreign_key "personnel_position_closure_fk" {
    columns     = [column.descendant]
    ref_columns = [table.personnel_position.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_position_closure_down" {
    columns = [column.ancestor, column.descendant, column.depth]
  }
  without_rowid = true
}
table "personnel_position_position_code_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_position_position_code_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_position.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_position_position_code_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_position_position_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = integer
  }
  column "gram" {
    null = false
    type = text
  }
  column "lcp" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id, column.gram]
  }
  foreign_key "personnel_position_position_name_fold_substr_fk" {
    columns     = [column.id]
    ref_columns = [table.personnel_position.column.id]
    on_update   = NO_ACTION
    on_delete   = CASCADE
  }
  index "personnel_position_position_name_fold_substr_gram" {
    columns = [column.gram, column.lcp, column.id]
  }
  without_rowid = true
}
table "personnel_replica" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "name" {
    null = false
    type = text
  }
  column "version" {
    null = false
    type = text
  }
  column "schema_version" {
    null = false
    type = integer
  }
  column "started_at" {
    null = false
    type = integer
  }
  column "seen_at" {
    null = false
    type = integer
  }
  primary_key {
    columns = [column.id]
  }
}
table "personnel_user" {
  schema = schema.main
  column "id" {
    null           = false
    type           = integer
    auto_increment = true
  }
  column "username" {
    null = false
    type = text
  }
  column "username_key" {
    null = true
    type = text
  }
  column "token_generation" {
    null    = false
    type    = integer
    default = sql("0")
  }
  column "password_hash" {
    null = false
    type = text
  }
  column "role" {
    null = false
    type = text
  }
  column "active" {
    null    = false
    type    = bool
    default = sql("true")
  }
  column "tokens_valid_after" {
    null = false
    type = datetime
  }
  column "created_at" {
    null = false
    type = datetime
  }
  column "updated_at" {
    null = false
    type = datetime
  }
  primary_key {
    columns = [column.id]
  }
  index "personnel_user_username_key" {
    unique  = true
    columns = [column.username]
  }
  index "personnel_user_username_key_key" {
    unique  = true
    columns = [column.username_key]
  }
}
schema "main" {
}
