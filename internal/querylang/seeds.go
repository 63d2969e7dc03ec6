package querylang

// SeedQueries are query texts that exercise every token kind and every
// refusal of CheckQueryText (a second statement, a named parameter, a
// schema-qualified name, unterminated quotes and comments): the seed
// corpus of the fuzz targets of the query-text checkers and rewriters.
var SeedQueries = []string{
	"SELECT * FROM todos WHERE project_id = ?",
	"with t as (select id from todos) select * from t where id > ?2 and id < ?1",
	`SELECT "a""b", [x y], ` + "`q`" + `, 'it''s', x'00ff', 1.5e3, .5, 0x1F FROM todos`,
	"SELECT 1; -- trailing comment\n",
	"SELECT 1;;  ",
	"SELECT 1; DELETE FROM todos",
	"SELECT ';' AS s FROM todos /* ; */ WHERE a = '--'",
	"SELECT :name", "SELECT @x", "SELECT $x", "SELECT #x",
	"SELECT * FROM main.todos", `SELECT * FROM "MAIN" . todos`, "SELECT * FROM [temp].t", "SELECT * FROM 'main'.t",
	"SELECT ?0", "SELECT ?32767", "SELECT 'unterminated", `SELECT "unterminated`, "SELECT /* unterminated",
	"PRAGMA table_info(todos)", "ATTACH 'x' AS y", "", ";", "SELECT 1 /*",
	"SELECT 1x", "SELECT 0x", "SELECT 1e", "SELECT \x00", "SELECT \xff",
}
