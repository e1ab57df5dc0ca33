from goalsui.cli import main

raise SystemExit(main())
