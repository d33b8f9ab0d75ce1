// Command sqlite-interrupt checks whether a build of the modernc.org/sqlite driver keeps one connection usable when
// the contexts of the statements on it expire while they run — the way a Temporal server on SQLite uses it (one
// connection for everything, a deadline on every persistence call). In rounds of one second, sixteen goroutines
// share that connection with transactions whose deadlines are a few milliseconds at most; after each round plain
// queries without a deadline must still answer. It prints STUCK with the error and exits 1 as soon as every one of
// them is refused (the connection was left interrupted for good), and OK, exit 0, when they answered after every
// round.
//
// Usage: sqlite-interrupt <database file> [rounds]
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sqlite-interrupt <database file> [rounds]")
		os.Exit(2)
	}
	rounds := 10
	if len(os.Args) > 2 {
		if n, err := strconv.Atoi(os.Args[2]); err == nil && n > 0 {
			rounds = n
		}
	}
	db, err := sql.Open("sqlite", "file:"+os.Args[1]+"?_pragma=journal_mode(WAL)")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS rows_written (id INTEGER PRIMARY KEY, body BLOB)"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	for round := 1; round <= rounds; round++ {
		busy(db, time.Second, int64(round))
		if err := answers(db); err != nil {
			fmt.Printf("STUCK: after round %d every query was refused: %v\n", round, err)
			os.Exit(1)
		}
	}
	fmt.Printf("OK: the connection still answered after each of %d rounds\n", rounds)
}

// busy runs sixteen goroutines of short transactions with tiny deadlines on db for d.
func busy(db *sql.DB, d time.Duration, round int64) {
	until := time.Now().Add(d)
	var workers sync.WaitGroup
	for w := int64(0); w < 16; w++ {
		workers.Add(1)
		go func(seed int64) {
			defer workers.Done()
			random := rand.New(rand.NewSource(seed))
			for time.Now().Before(until) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(random.Intn(3000))*time.Microsecond)
				if tx, err := db.BeginTx(ctx, nil); err == nil {
					_, _ = tx.ExecContext(ctx, "INSERT INTO rows_written (body) VALUES (randomblob(2000))")
					if rows, err := tx.QueryContext(ctx, "SELECT count(*), sum(length(body)) FROM rows_written"); err == nil {
						for rows.Next() {
						}
						_ = rows.Close()
					}
					_ = tx.Commit()
				}
				cancel()
			}
		}(round*100 + w)
	}
	workers.Wait()
}

// answers is nil when a plain query succeeds within five tries, else the last error.
func answers(db *sql.DB) error {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		var n int
		if last = db.QueryRow("SELECT count(*) FROM rows_written").Scan(&n); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}
