from membolt.cli import main

raise SystemExit(main())
