package provider

// timeoutsDeleteDescription is the description of timeouts.delete: the timeouts library's own
// text, its lead sentence split from the details as every attribute description does
// (descriptions_test.go).
const timeoutsDeleteDescription = `A string that can be [parsed as a duration](https://pkg.go.dev/time#ParseDuration) ` +
	`consisting of numbers and unit suffixes, such as "30s" or "2h45m".` + "\n\n" +
	`Valid time units are "s" (seconds), "m" (minutes), "h" (hours). Setting a timeout for a Delete operation ` +
	`is only applicable if changes are saved into state before the destroy operation occurs.`
