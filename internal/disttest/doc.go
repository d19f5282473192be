// Package disttest tests what scripts/dist makes the way a user meets it:
// the npm packages installed with npm, and spbridge run through them. It
// holds tests only.
package disttest
