package schemas

//go:generate go run ./gen ./jsonschema
