table "personnel_area" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "area_code" {
    null = false
    type = varchar
  }
  column "area_code_fold" {
    null = false
    type = varchar
  }
  column "area_name" {
    null = false
    type = varchar
  }
  column "area_name_fold" {
    null = false
    type = varchar
  }
  column "parent_area_id" {
    null = true
    type = bigint
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
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_area_area_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_area_below" {
  schema = schema.main
  column "ancestor" {
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
    columns = [column.ancestor, column.slot]
  }
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
}
table "personnel_area_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = bigint
  }
  column "ancestor" {
    null = false
    type = bigint
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
}
table "personnel_audit" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "at" {
    null = false
    type = bigint
  }
  column "actor_id" {
    null = true
    type = bigint
  }
  column "actor_username" {
    null = true
    type = varchar
  }
  column "actor_command" {
    null = true
    type = varchar
  }
  column "request_id" {
    null = true
    type = varchar
  }
  column "resource" {
    null = false
    type = varchar
  }
  column "record_id" {
    null = false
    type = bigint
  }
  column "action" {
    null = false
    type = varchar
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "salt" {
    null = false
    type = varchar
  }
  column "key_hash" {
    null = false
    type = varchar
  }
  column "created_at" {
    null = false
    type = timestamptz
  }
  column "user_id" {
    null = false
    type = bigint
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "seq" {
    null = true
    type = bigint
  }
  column "table_name" {
    null = false
    type = varchar
  }
  column "record_id" {
    null = false
    type = bigint
  }
  column "deleted" {
    null = false
    type = boolean
  }
  column "at" {
    null = false
    type = bigint
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "table_name" {
    null = false
    type = varchar
  }
  column "slot" {
    null = false
    type = bigint
  }
  column "records" {
    null = false
    type = bigint
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "dept_code" {
    null = false
    type = varchar
  }
  column "dept_code_fold" {
    null = false
    type = varchar
  }
  column "dept_name" {
    null = false
    type = varchar
  }
  column "dept_name_fold" {
    null = false
    type = varchar
  }
  column "parent_dept_id" {
    null = true
    type = bigint
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
    columns = [column.ancestor, column.slot]
  }
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
}
table "personnel_department_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = bigint
  }
  column "ancestor" {
    null = false
    type = bigint
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
}
table "personnel_department_dept_code_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_department_dept_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_derived" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "table_name" {
    null = false
    type = varchar
  }
  column "structure" {
    null = false
    type = varchar
  }
  column "trusted" {
    null = false
    type = bigint
  }
  column "since" {
    null    = false
    type    = bigint
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "table_name" {
    null = false
    type = varchar
  }
  column "seq" {
    null = false
    type = bigint
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "subject" {
    null = false
    type = varchar
  }
  column "at" {
    null = false
    type = timestamptz
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
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "position_code" {
    null = false
    type = varchar
  }
  column "position_code_fold" {
    null = false
    type = varchar
  }
  column "position_name" {
    null = false
    type = varchar
  }
  column "position_name_fold" {
    null = false
    type = varchar
  }
  column "parent_position_id" {
    null = true
    type = bigint
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
    columns = [column.ancestor, column.slot]
  }
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
}
table "personnel_position_closure" {
  schema = schema.main
  column "descendant" {
    null = false
    type = bigint
  }
  column "ancestor" {
    null = false
    type = bigint
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
}
table "personnel_position_position_code_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_position_position_name_fold_substr" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
  }
  column "gram" {
    null = false
    type = character_varying(16)
  }
  column "lcp" {
    null = false
    type = smallint
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
}
table "personnel_replica" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "name" {
    null = false
    type = varchar
  }
  column "version" {
    null = false
    type = varchar
  }
  column "schema_version" {
    null = false
    type = bigint
  }
  column "started_at" {
    null = false
    type = bigint
  }
  column "seen_at" {
    null = false
    type = bigint
  }
  primary_key {
    columns = [column.id]
  }
}
table "personnel_user" {
  schema = schema.main
  column "id" {
    null = false
    type = bigint
    identity {
      generated = BY_DEFAULT
    }
  }
  column "username" {
    null = false
    type = varchar
  }
  column "username_key" {
    null = true
    type = varchar
  }
  column "token_generation" {
    null    = false
    type    = bigint
    default = sql("0")
  }
  column "password_hash" {
    null = false
    type = varchar
  }
  column "role" {
    null = false
    type = varchar
  }
  column "active" {
    null    = false
    type    = boolean
    default = sql("true")
  }
  column "tokens_valid_after" {
    null = false
    type = timestamptz
  }
  column "created_at" {
    null = false
    type = timestamptz
  }
  column "updated_at" {
    null = false
    type = timestamptz
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
